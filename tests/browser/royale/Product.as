package
{
    /** A typed value object, registered under the alias that amfgate's echo sends back. */
    public class Product
    {
        public var id:int;
        public var name:String;
        public var price:Number;
        public var tags:Array;
    }
}
